"""Tags, tag types and a flag's tags, answered as Unleash 8.2's tag, tag-type and (legacy)
feature controllers answer them."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.models import Feature, Tag, TagType
from features.schema import SpecNamedAutoSchema
from features.serializers import TagSchemaSerializer
from features.tag_serializers import (
    TAG_PROPERTIES,
    CreateTagSchemaSerializer,
    TagResponseSerializer,
    TagsSchemaSerializer,
    TagTypeResponseSerializer,
    TagTypeSchemaSerializer,
    TagTypesSchemaSerializer,
    TagTypeWithVersionSchemaSerializer,
    TagWithVersionSchemaSerializer,
    UpdateTagsSchemaSerializer,
    UpdateTagTypeSchemaSerializer,
    ValidateTagTypeSchemaSerializer,
    refuse_additional_properties,
)
from features.tag_services import (
    add_feature_tag,
    check_tag_type_name_free,
    create_tag,
    create_tag_type,
    delete_tag,
    delete_tag_type,
    feature_tags,
    remove_feature_tag,
    update_feature_tags,
    update_tag_type,
)
from flagadmin.api.errors import NoAccessError, NotFoundError
from flagadmin.api.permissions import AdminApiPrincipal, required_permission
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.names import URL_SAFE_CHARACTERS

VERSION = 1
FEATURE_NAME = OpenApiParameter("featureName", str, OpenApiParameter.PATH, description="Flag name.")
TAG_TYPE = OpenApiParameter("type", str, OpenApiParameter.PATH, description="Tag type.")
TAG_VALUE = OpenApiParameter("value", str, OpenApiParameter.PATH, description="Tag value.")
TAG_TYPE_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="Tag type.")
NO_BODY = OpenApiResponse(description="This response has no body.")


def _path(*parts: str) -> str:
    return "/".join(quote(part, safe=URL_SAFE_CHARACTERS) for part in parts)


class FlagProjectPermission(AdminApiPrincipal):
    """The view's permission, scoped to the project of the flag named in the URL (Unleash
    finds the project from the flag name); root permissions only for a flag that does not
    exist, which then answers 404."""

    def has_permission(self, request: Request, view) -> bool:
        super().has_permission(request, view)
        permission = required_permission(view)
        if permission is None or permission == perms.NONE:
            return True
        project_id = (
            Feature.objects.filter(name=view.kwargs["featureName"])
            .values_list("project_id", flat=True)
            .first()
        )
        if not request.user.has_permission(permission, project_id=project_id):
            raise NoAccessError(permission)
        return True


class FeatureTagViewSet(AdminApiMixin, viewsets.ViewSet):
    """A flag's tags. Tags reach SDKs through the client API's `tag=type:value` filter."""

    schema = SpecNamedAutoSchema()
    permission_classes = [FlagProjectPermission]
    required_permissions = {
        "list": perms.NONE,
        "add": perms.UPDATE_FEATURE,
        "update": perms.UPDATE_FEATURE,
        "remove": perms.UPDATE_FEATURE,
    }

    @staticmethod
    def _feature(name: str, message: str | None = None) -> Feature:
        feature = Feature.objects.filter(name=name).first()
        if feature is None:
            raise NotFoundError(message or f"Could not find feature with name {name}")
        return feature

    @staticmethod
    def _tags(feature: Feature) -> dict[str, Any]:
        tags = serialize(feature_tags(feature), TagResponseSerializer, with_colour=True)
        return {"version": VERSION, "tags": tags}

    @extend_schema(
        operation_id="listTags",
        tags=["Features"],
        summary="Get all tags for a feature.",
        description=(
            "The flag's tags, in the order they were added, each with its type's colour. "
            "404 for a flag that does not exist (archived flags have their tags)."
        ),
        parameters=[FEATURE_NAME],
        responses={200: TagsSchemaSerializer, **error_responses(404)},
    )
    def list(self, request: Request, featureName: str) -> Response:
        return Response(self._tags(self._feature(featureName)))

    @extend_schema(
        operation_id="addTag",
        tags=["Features"],
        summary="Adds a tag to a feature.",
        description=(
            "Tags the flag (`feature-tagged`), creating the tag when new (`tag-created`). "
            "Idempotent. 400 for a tag type that does not exist. Needs `UPDATE_FEATURE` in the "
            "flag's project. 201 with the tag as sent."
        ),
        parameters=[FEATURE_NAME],
        request=TagSchemaSerializer,
        responses={201: TagSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def add(self, request: Request, featureName: str) -> Response:
        body = TagSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        refuse_additional_properties(request.data, TAG_PROPERTIES)
        feature = self._feature(featureName, "No feature flag found")
        tag = body.validated_data
        add_feature_tag(
            feature=feature, tag_type=tag["type"], value=tag["value"], actor=request.user
        )
        return Response(
            {"type": tag["type"], "value": tag["value"]},
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/features/{_path(featureName)}/tags"},
        )

    @extend_schema(
        operation_id="updateTags",
        tags=["Features"],
        summary="Updates multiple tags for a feature.",
        description=(
            "Adds every tag of `addedTags`, then removes every tag of `removedTags` (both "
            "required, either may be empty), all or none. Needs `UPDATE_FEATURE` in the flag's "
            "project. 200 with the flag's tags."
        ),
        parameters=[FEATURE_NAME],
        request=UpdateTagsSchemaSerializer,
        responses={200: TagsSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def update(self, request: Request, featureName: str) -> Response:
        body = UpdateTagsSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        feature = self._feature(featureName)
        data = body.validated_data
        update_feature_tags(
            feature=feature,
            added=[(t["type"], t["value"]) for t in data["addedTags"]],
            removed=[(t["type"], t["value"]) for t in data["removedTags"]],
            actor=request.user,
        )
        return Response(self._tags(feature))

    @extend_schema(
        operation_id="removeTag",
        tags=["Features"],
        summary="Removes a tag from a feature.",
        description=(
            "Untags the flag (`feature-untagged`); a tag it does not have: 200 all the same. "
            "Needs `UPDATE_FEATURE` in the flag's project. 200, no body."
        ),
        parameters=[FEATURE_NAME, TAG_TYPE, TAG_VALUE],
        request=None,
        responses={200: NO_BODY, **error_responses(404)},
    )
    def remove(self, request: Request, featureName: str, type: str, value: str) -> Response:
        feature = self._feature(featureName, "No feature flag found")
        remove_feature_tag(feature=feature, tag_type=type, value=value, actor=request.user)
        return Response(status=status.HTTP_200_OK)


class TagViewSet(AdminApiMixin, viewsets.ViewSet):
    """Tags: values of a tag type that flags share."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "list": perms.NONE,
        "create": perms.NONE,
        "by_type": perms.NONE,
        "retrieve": perms.NONE,
        "destroy": perms.UPDATE_FEATURE,
    }

    @staticmethod
    def _tags(queryset: QuerySet[Tag]) -> dict[str, Any]:
        return {
            "version": VERSION,
            "tags": serialize(queryset.order_by("id"), TagResponseSerializer),
        }

    @extend_schema(
        operation_id="getTags",
        tags=["Tags"],
        summary="List all tags.",
        description="Every tag, in the order they were created.",
        responses={200: TagsSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        return Response(self._tags(Tag.objects.all()))

    @extend_schema(
        operation_id="createTag",
        tags=["Tags"],
        summary="Create a new tag.",
        description=(
            "Creates a tag (`tag-created`), its value trimmed. 409 `NameExistsError` when it "
            "exists, 400 when its type does not. 201 with the tag and its `Location`."
        ),
        request=CreateTagSchemaSerializer,
        responses={201: TagWithVersionSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = CreateTagSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tag = create_tag(tag_type=data["type"], value=data["value"], actor=request.user)
        return Response(
            {"version": VERSION, "tag": serialize(tag, TagResponseSerializer)},
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/tags/{_path(tag.type_id, tag.value)}"},
        )

    @extend_schema(
        operation_id="getTagsByType",
        tags=["Tags"],
        summary="List all tags of a given type.",
        description="The tags of the type; an empty list for a type that does not exist.",
        parameters=[TAG_TYPE],
        responses={200: TagsSchemaSerializer, **error_responses()},
    )
    def by_type(self, request: Request, type: str) -> Response:
        return Response(self._tags(Tag.objects.filter(type_id=type)))

    @extend_schema(
        operation_id="getTag",
        tags=["Tags"],
        summary="Get a tag by type and value.",
        description="The tag; 404 when it does not exist.",
        parameters=[TAG_TYPE, TAG_VALUE],
        responses={200: TagWithVersionSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, type: str, value: str) -> Response:
        tag = Tag.objects.filter(type_id=type, value=value).first()
        if tag is None:
            raise NotFoundError(f"No tag with type: [{type}] and value [{value}]")
        return Response({"version": VERSION, "tag": serialize(tag, TagResponseSerializer)})

    @extend_schema(
        operation_id="deleteTag",
        tags=["Tags"],
        summary="Delete a tag.",
        description=(
            "Deletes the tag and removes it from every flag (`tag-deleted`); an unknown tag: "
            "200 all the same. Needs `UPDATE_FEATURE`. 200, no body."
        ),
        parameters=[TAG_TYPE, TAG_VALUE],
        request=None,
        responses={200: NO_BODY, **error_responses()},
    )
    def destroy(self, request: Request, type: str, value: str) -> Response:
        delete_tag(tag_type=type, value=value, actor=request.user)
        return Response(status=status.HTTP_200_OK)


class TagTypeViewSet(AdminApiMixin, viewsets.ViewSet):
    """Tag types: the kinds of tags (`simple` is seeded)."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "list": perms.NONE,
        "retrieve": perms.NONE,
        "validate": perms.NONE,
        "create": perms.CREATE_TAG_TYPE,
        "update": perms.UPDATE_TAG_TYPE,
        "destroy": perms.DELETE_TAG_TYPE,
    }

    @extend_schema(
        operation_id="getTagTypes",
        tags=["Tags"],
        summary="Get all tag types",
        description="Every tag type, by name.",
        responses={200: TagTypesSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        tag_types = serialize(TagType.objects.order_by("name"), TagTypeResponseSerializer)
        return Response({"version": VERSION, "tagTypes": tag_types})

    @extend_schema(
        operation_id="createTagType",
        tags=["Tags"],
        summary="Create a tag type",
        description=(
            "Creates a tag type (`tag-type-created`). 409 `NameExistsError` for a name taken. "
            "Needs `CREATE_TAG_TYPE` (admins). 201 with the tag type as sent and its "
            "`Location`."
        ),
        request=TagTypeSchemaSerializer,
        responses={201: TagTypeSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = TagTypeSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        create_tag_type(fields=fields, actor=request.user)
        return Response(
            fields,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/tag-types/{_path(fields['name'])}"},
        )

    @extend_schema(
        operation_id="validateTagType",
        tags=["Tags"],
        summary="Validate a tag type",
        description=(
            "Whether the body is a valid tag type whose name is free: 200 when it is, 400 when "
            "it is not valid, 409 `NameExistsError` when the name is taken."
        ),
        request=TagTypeSchemaSerializer,
        responses={200: ValidateTagTypeSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def validate(self, request: Request) -> Response:
        body = TagTypeSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        check_tag_type_name_free(fields["name"])
        return Response({"valid": True, "tagType": fields})

    @extend_schema(
        operation_id="getTagType",
        tags=["Tags"],
        summary="Get a tag type",
        description="The tag type; 404 when it does not exist.",
        parameters=[TAG_TYPE_NAME],
        responses={200: TagTypeWithVersionSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, name: str) -> Response:
        tag_type = TagType.objects.filter(pk=name).first()
        if tag_type is None:
            raise NotFoundError("Could not find tag-type")
        tag_type_body = serialize(tag_type, TagTypeResponseSerializer)
        return Response({"version": VERSION, "tagType": tag_type_body})

    @extend_schema(
        operation_id="updateTagType",
        tags=["Tags"],
        summary="Update a tag type",
        description=(
            "Changes the fields given (`tag-type-updated`); 404 for a tag type that does not "
            "exist. Needs `UPDATE_TAG_TYPE` (admins). 200, no body."
        ),
        parameters=[TAG_TYPE_NAME],
        request=UpdateTagTypeSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 404, 413, 415)},
    )
    def update(self, request: Request, name: str) -> Response:
        body = UpdateTagTypeSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        update_tag_type(name=name, fields=dict(body.validated_data), actor=request.user)
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        operation_id="deleteTagType",
        tags=["Tags"],
        summary="Delete a tag type",
        description=(
            "Deletes the tag type, its tags and their uses on flags (`tag-type-deleted`); 404 "
            "for a tag type that does not exist. Needs `DELETE_TAG_TYPE` (admins). 200, no body."
        ),
        parameters=[TAG_TYPE_NAME],
        request=None,
        responses={200: NO_BODY, **error_responses(404)},
    )
    def destroy(self, request: Request, name: str) -> Response:
        delete_tag_type(name=name, actor=request.user)
        return Response(status=status.HTTP_200_OK)
